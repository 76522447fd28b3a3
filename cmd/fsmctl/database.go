package main

import (
	"github.com/fsmgen/fsmgen/internal/dbconn"
)

// fsmctl connects as package dbconn does.
var connect = dbconn.Connect

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
