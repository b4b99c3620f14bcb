//go:build !linux

package gguf

func dropPages([]byte) {}
