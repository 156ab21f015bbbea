//go:build !unix

package broker

// watchClose does not watch on this platform: a client that leaves while
// blocked is noticed when its wait ends (timeout or wake-up).
func (c *conn) watchClose() (stop func()) { return func() {} }
