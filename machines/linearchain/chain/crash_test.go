package chain_test

func crashWorkerMain() bool { return false }
