//go:build !linux

package main

import "errors"

func serveEpoll(int) error { return errors.New("-mode epoll needs Linux") }
