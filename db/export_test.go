package db

// Regrant is regrant, for the tests of the grants that later migrations
// give again.
var Regrant = regrant
