package leakcheck

import (
	"syscall"
	"time"
)

var stopSignal = syscall.SIGSTOP

func waitABit() { time.Sleep(time.Millisecond) }
