package pgstore

// AdvanceBatch is the group commit's write (advanceBatch), for tests.
var AdvanceBatch = (*DB).advanceBatch
