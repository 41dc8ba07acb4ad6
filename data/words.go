package data

import "fmt"

// Plural says a count of things as the site and the commands write it:
// "1 check", "2 checks", "0 checks".
func Plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
