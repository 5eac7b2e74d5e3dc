//go:build !gendocs

package main

const genManBuilt = false
