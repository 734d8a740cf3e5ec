// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one running component of the fleet, identified by its pid and
// the kernel's start time for that pid, so that a pid reused by another
// program after a crash is never mistaken for (or signalled as) ours.
type Process struct {
	// Name is the component, e.g. kube-apiserver.
	Name string `json:"name"`
	// Binary and Args are what was started.
	Binary string   `json:"binary"`
	Args   []string `json:"args"`
	// Pid and StartTime (clock ticks after boot, /proc/PID/stat field 22) identify it.
	Pid       int    `json:"pid"`
	StartTime uint64 `json:"startTime"`
	// Log is the file that holds its stdout and stderr.
	Log string `json:"log"`

	done chan struct{} // closed when it exits; nil when started by another process
}

// startProcess starts bin detached from the caller's terminal (own process
// group), with output to logPath and its pid written to logPath's .pid twin.
// With dieWithParent the kernel kills it when the caller dies (a test binary
// killed by its timeout must not leave API servers behind). env (KEY=VALUE)
// is added to the caller's environment.
func startProcess(name, bin string, args, env []string, logPath string, dieWithParent bool) (*Process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logf.Close() }()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Dir = filepath.Dir(logPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if dieWithParent {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, Binary: bin, Args: args, Pid: cmd.Process.Pid, Log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	if st, _, err := procStat(p.Pid); err == nil {
		p.StartTime = st
	}
	pidFile := strings.TrimSuffix(logPath, ".log") + ".pid"
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(p.Pid)+"\n"), 0o644); err != nil {
		return p, err
	}
	return p, nil
}

// Alive reports whether the process is still running (a zombie is not).
func (p *Process) Alive() bool {
	if p.done != nil {
		select {
		case <-p.done:
			return false
		default:
		}
	}
	st, state, err := procStat(p.Pid)
	if err != nil || state == 'Z' || state == 'X' {
		return false
	}
	return p.StartTime == 0 || st == p.StartTime
}

// Stop sends SIGTERM to the process group, waits up to grace, then SIGKILLs.
// It returns once the process is gone.
func (p *Process) Stop(grace time.Duration) error {
	if !p.Alive() {
		return nil
	}
	_ = syscall.Kill(-p.Pid, syscall.SIGTERM)
	if p.waitGone(grace) {
		return nil
	}
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	_ = syscall.Kill(p.Pid, syscall.SIGKILL)
	if p.waitGone(10 * time.Second) {
		return nil
	}
	return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.Name, p.Pid)
}

func (p *Process) waitGone(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !p.Alive() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return !p.Alive()
}

// RSS returns the resident memory of the process in bytes (0 when gone).
func (p *Process) RSS() int64 {
	if !p.Alive() {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// CPU returns the CPU time (user and system) the process has used so far
// (0 when gone).
func (p *Process) CPU() time.Duration {
	if !p.Alive() {
		return 0
	}
	d, _ := CPUTime(p.Pid)
	return d
}

// CPUTime reads the CPU time (user and system) process pid has used so far
// from /proc/PID/stat (utime and stime, fields 14 and 15).
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	rest := strings.Fields(string(b[i+1:]))
	if len(rest) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(rest))
	}
	ut, _ := strconv.ParseInt(rest[11], 10, 64)
	st, _ := strconv.ParseInt(rest[12], 10, 64)
	return time.Duration(ut+st) * time.Second / time.Duration(clockTicks()), nil
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat times.
var clockTicks = sync.OnceValue(func() int64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if n, perr := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && perr == nil && n > 0 {
		return n
	}
	return 100
})

// LogTail returns the last n lines of the process's log.
func (p *Process) LogTail(n int) string {
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// errExited reports a component that died while the fleet was starting.
func (p *Process) errExited() error {
	return fmt.Errorf("%w: %s (pid %d) exited; last lines of %s:\n%s", ErrComponentExited, p.Name, p.Pid, p.Log, p.LogTail(15))
}

// ErrComponentExited is returned when a fleet process dies during start-up.
var ErrComponentExited = errors.New("fleet component exited")

// procStat returns the start time and state of pid from /proc/PID/stat.
func procStat(pid int) (uint64, byte, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(b[i+2:]))
	if len(fields) < 20 {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	st, err := strconv.ParseUint(fields[19], 10, 64)
	return st, fields[0][0], err
}
