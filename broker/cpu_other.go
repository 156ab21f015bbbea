//go:build !unix

package broker

// cpuTimes is unknown here: INFO cpu is empty.
func cpuTimes() ([4]string, bool) { return [4]string{}, false }
