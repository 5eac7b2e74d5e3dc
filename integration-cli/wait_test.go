package integration

import "time"

// waitFor checks cond until it holds or timeout passes, and reports
// whether it held. It is for what only a poll can see (a file, a process,
// another program's log or metrics); the pause between tries grows from
// 1 ms to 50 ms, so a condition that holds at once costs little and a
// long wait costs little CPU.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
	return true
}
