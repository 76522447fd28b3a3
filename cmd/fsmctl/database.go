package main

import (
	"github.com/fsmgen/fsmgen/internal/dbconn"
)

// fsmctl checks connection strings and connects as package dbconn does.
var (
	parseConfig = dbconn.ParseConfig
	describe    = dbconn.Describe
	connect     = dbconn.Connect
)

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
