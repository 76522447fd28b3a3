//go:build linux

package benchdb

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// clockTicks is the unit of the processor times in /proc/PID/stat
// (USER_HZ, 100 on every Linux architecture).
const clockTicks = 100

// serverCPU returns the processor time, in milliseconds, that the server
// whose backend is pid has used: the postmaster's children alive (backends,
// the WAL writer, the checkpointer...) and ended. It reports false when
// /proc does not show the processes (a server on another machine, or in a
// container of its own).
func serverCPU(backend int) (float64, bool) {
	_, postmaster, ok := procStat(backend)
	if !ok || postmaster <= 1 {
		return 0, false
	}
	f, err := readStat(postmaster)
	if err != nil || len(f) < 17 {
		return 0, false
	}
	// cutime and cstime: the children that ended and were waited for.
	ticks := field(f, 15) + field(f, 16)
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		used, parent, ok := procStat(pid)
		if ok && parent == postmaster {
			ticks += used
		}
	}
	return float64(ticks) * 1000 / clockTicks, true
}

// procStat returns the user and system time (in clock ticks) of process pid
// and its parent's pid.
func procStat(pid int) (ticks int64, parent int, ok bool) {
	f, err := readStat(pid)
	if err != nil || len(f) < 15 {
		return 0, 0, false
	}
	return field(f, 13) + field(f, 14), int(field(f, 3)), true
}

// readStat returns the fields of /proc/PID/stat, numbered from 0 as in
// proc(5) less one, with the command (field 1, which may hold spaces and
// parentheses) taken out as one.
func readStat(pid int) ([][]byte, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, err
	}
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return nil, os.ErrInvalid
	}
	head := bytes.Fields(b[:bytes.IndexByte(b, '(')])
	return append(append(head, b[bytes.IndexByte(b, '('):end+1]), bytes.Fields(b[end+1:])...), nil
}

func field(f [][]byte, i int) int64 {
	n, _ := strconv.ParseInt(string(f[i]), 10, 64)
	return n
}
