package ws

// SetReadyHook makes every connection call h once it streams; the
// returned function removes the hook.
func SetReadyHook(h func(user string)) func() {
	readyHook = h
	return func() { readyHook = nil }
}
