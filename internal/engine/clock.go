package engine

import "time"

// clockOrigin anchors the engine's monotonic clock. time.Since reads the
// monotonic clock through the vDSO, cheap enough to call once per message.
var clockOrigin = time.Now()

// monotonicNow returns nanoseconds since clockOrigin; it is never zero, so
// zero can mean "not yet".
func monotonicNow() int64 {
	return int64(time.Since(clockOrigin)) + 1
}
