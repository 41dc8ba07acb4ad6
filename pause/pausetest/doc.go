// Package pausetest is a small in-memory fake of the GitHub REST API for the
// tests of pause and cmd/pause: one repository, the endpoints a pause
// request uses (contents with ETags, refs, pull requests and their files,
// compare), served on a loopback address. Tests never reach the real GitHub.
package pausetest
