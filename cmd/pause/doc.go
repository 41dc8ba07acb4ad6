// Command pause carries an owner's request to stop the checks of their
// server (rules R1, S8) to the paused list in the directory repository, and
// guards that list in the repository's CI.
//
// Open a pause request, from the report form or the email inbox:
//
//	pause -repo OWNER/REPO -path paused.txt -server ID -note TEXT [-base main] [-servers servers.csv]
//
// opens a pull request adding one line for the server (an id, or an address
// that pauses every server listed at it). It refuses a server the list
// already names and, given -servers, one the ranked list does not hold.
//
// Check a pull request, in the directory repository's CI:
//
//	pause -check-pr N -repo OWNER/REPO -path paused.txt -servers servers.csv
//
// prints a verdict and exits 1 unless the pull request only adds or removes
// lines of the paused list and every line it adds parses and names a listed
// server; also when it cannot be checked (GitHub unreachable), saying why.
// Bad flags exit 2, -h 0, as every command (see cmd/internal/cli).
//
// The GitHub token comes from GITHUB_TOKEN and is sent only to the API host
// (-api, default https://api.github.com/, or a GitHub Enterprise
// https://HOST/api/v3/). It needs contents and pull requests write access to
// open a request, and read access to check one.
package main
