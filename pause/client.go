package pause

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"

	"plug.directory/prober/data"
)

// DefaultAPI is the GitHub REST API base URL.
const DefaultAPI = "https://api.github.com/"

// TokenEnv is the environment variable the commands read the GitHub token
// from. Without one the API is read anonymously (60 requests an hour).
const TokenEnv = "GITHUB_TOKEN"

// requestTimeout bounds one GitHub request, so that a hanging API cannot hold
// up the minute's plan; the caller's context may cut it shorter.
const requestTimeout = 20 * time.Second

// NewClient returns a go-github client for the REST API at api (DefaultAPI
// when ""; a GitHub Enterprise server's is https://HOST/api/v3/). When token
// is not "", it is sent as "Authorization: Bearer" on requests to the API's
// own scheme and host only: a redirect to any other host, or an
// http.RoundTripper shared with something else, never carries it. base is the
// transport to use (nil means http.DefaultTransport). It returns an error when
// api does not parse, or when a token would travel unencrypted to a host that
// is not the loopback one tests use.
func NewClient(api, token string, base http.RoundTripper) (*github.Client, error) {
	if api == "" {
		api = DefaultAPI
	}
	u, err := url.Parse(api)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("parse github api url %q: want http(s)://HOST/PATH", api)
	}
	if token != "" && u.Scheme != "https" && !isLoopback(u.Hostname()) {
		return nil, fmt.Errorf("github api url %q: a token is only sent over https", api)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	if base == nil {
		base = http.DefaultTransport
	}
	hc := &http.Client{
		Transport: &tokenTransport{scheme: u.Scheme, host: u.Host, token: token, base: base},
		Timeout:   requestTimeout,
	}
	c := github.NewClient(hc)
	c.BaseURL = u
	c.UserAgent = data.UserAgent()
	return c, nil
}

// tokenTransport adds the token to requests for one scheme and host. Doing it
// per request, rather than through go-github's WithAuthToken (which adds it to
// every request, redirects included), is what keeps the token on GitHub.
type tokenTransport struct {
	scheme, host string
	token        string
	base         http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.token == "" || req.URL.Scheme != t.scheme || !strings.EqualFold(req.URL.Host, t.host) {
		if req.Header.Get("Authorization") != "" {
			req = req.Clone(req.Context())
			req.Header.Del("Authorization")
		}
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+t.token)
	return t.base.RoundTrip(req)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
