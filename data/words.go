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

// ExpiresIn says when a certificate with days left (TLSInfo.DaysLeft)
// expires, in the words of the site and of run -url: "expires today",
// "expires tomorrow", "expires in 2 days".
func ExpiresIn(days int) string {
	switch days {
	case 0:
		return "expires today"
	case 1:
		return "expires tomorrow"
	}
	return "expires in " + Plural(days, "day")
}
