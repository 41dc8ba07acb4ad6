// Package cli holds what every command of the prober shares on its command
// line: one exit convention and one way to read a time.
//
// Exit status, for plan, run, publish, pause and demo alike:
//
//	0  success, and -h (the usage goes to standard output)
//	1  failure: the command ran and could not do its work (run -url: the
//	   server did not answer; pause -check-pr: the pull request is not
//	   acceptable)
//	2  bad usage: an unknown flag, a bad flag value, an argument, flags
//	   that do not go together (the error and the usage go to standard error)
//
// Times (plan -at, plan -base, run -at, publish -at) are read by [ParseTime]
// in one set of forms.
package cli
