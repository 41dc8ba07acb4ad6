package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"plug.directory/prober/data"
)

// TestCheckTarget proves rules N5-N7 on URLs before anything is sent.
func TestCheckTarget(t *testing.T) {
	cases := []struct {
		name   string
		url    string
		lab    bool
		rule   string // "" means allowed
		detail string
	}{
		{"N7_https_443", "https://mcp.example.com/mcp", false, "", ""},
		{"N7_https_explicit_443", "https://mcp.example.com:443/mcp", false, "", ""},
		{"N7_https_8443", "https://mcp.example.com:8443/mcp", false, "", ""},
		{"N7_scheme_case", "HTTPS://mcp.example.com/mcp", false, "", ""},
		{"N7_not_https", "http://mcp.example.com/mcp", false, "N7", data.DetailNotHTTPS},
		{"N7_ws", "wss://mcp.example.com/mcp", false, "N7", data.DetailNotHTTPS},
		{"N7_port_8080", "https://mcp.example.com:8080/mcp", false, "N7", data.DetailPort},
		{"N7_port_80", "https://mcp.example.com:80/mcp", false, "N7", data.DetailPort},
		{"N7_port_0443", "https://mcp.example.com:0443/mcp", false, "N7", data.DetailPort},
		{"N7_no_host", "https:///mcp", false, "N7", data.DetailNoAddress},
		{"N7_empty", "", false, "N7", data.DetailNoAddress},
		{"N5_userinfo", "https://user:pw@mcp.example.com/mcp", false, "N5", data.DetailCredential},
		{"N5_user_only", "https://token@mcp.example.com/mcp", false, "N5", data.DetailCredential},
		{"N5_credential_beats_http", "http://u:p@mcp.example.com/mcp", false, "N5", data.DetailCredential},
		{"N6_private_literal", "https://10.0.0.1/mcp", false, "N6", data.DetailNotPublicIPv4},
		{"N6_private_literal_lab", "https://192.168.1.1/mcp", true, "N6", data.DetailNotPublicIPv4},
		{"N6_loopback_literal", "https://127.0.0.1/mcp", false, "N6", data.DetailNotPublicIPv4},
		{"N6_loopback_literal_lab", "https://127.0.0.1:8443/mcp", true, "", ""},
		{"N6_ipv6_literal", "https://[2001:db8::1]/mcp", false, "N6", data.DetailNotPublicIPv4},
		{"N6_ipv6_loopback_lab", "https://[::1]:8443/mcp", true, "N6", data.DetailNotPublicIPv4},
		{"N6_public_literal", "https://8.8.8.8/mcp", false, "", ""},
		{"N6_fullwidth_loopback_literal", "https://１２７．０．０．１/mcp", false, "N6", data.DetailNotPublicIPv4},
		{"N6_fullwidth_private_literal_lab", "https://１０.0.0.1:8443/mcp", true, "N6", data.DetailNotPublicIPv4},
		{"N5_session_id_is_not_a_credential", "https://mcp.example.com/messages?sessionId=abc", false, "", ""},
		{"N5_plain_query", "https://mcp.example.com/mcp?profile=default&v=2", false, "", ""},
	}
	for _, name := range []string{"key", "api_key", "apikey", "api-key", "API_KEY", "token", "access_token",
		"secret", "password", "passwd", "auth", "authorization", "sig", "signature", "client_secret",
		"x-goog-api-key", "subscription-key", "tavilyApiKey", "X-Amz-Signature", "X-Amz-Credential", "db.password",
		"a%70i_key",
		// Names that slipped through before normalization.
		"token[]", "api_key[]", "token1", "tokens", "apikeys", "passphrase", "AWSAccessKeyId", "access_key_id",
		"token%09", "token%5B%5D", "Token+", "x-amz-security-token", "refresh_token2", "keys", "pass", "pwd",
		"id_jwt", "client-credentials", "private_key", "x-auth", "oauth", "my.secrets"} {
		cases = append(cases, struct {
			name   string
			url    string
			lab    bool
			rule   string
			detail string
		}{"N5_query_" + name, "https://mcp.example.com/mcp?x=1&" + name + "=abc", false, "N5", data.DetailCredential})
	}
	cases = append(cases, struct {
		name   string
		url    string
		lab    bool
		rule   string
		detail string
	}{"N5_query_semicolon", "https://mcp.example.com/mcp?x=1;token=abc", false, "N5", data.DetailCredential})
	// Ordinary parameters stay checkable, words that merely contain "key"
	// or "auth" included.
	for _, name := range []string{"page", "format", "version", "lang", "sessionId", "session_id", "profile", "v",
		"id", "mode", "keyword", "author", "region", "limit", "cursor", "debug", "q", "transport", "[]", "1"} {
		cases = append(cases, struct {
			name   string
			url    string
			lab    bool
			rule   string
			detail string
		}{"N5_query_accepted_" + name, "https://mcp.example.com/mcp?" + name + "=abc&x=1", false, "", ""})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, err := url.Parse(c.url)
			if err != nil {
				t.Fatalf("parse %q: %v", c.url, err)
			}
			err = CheckTarget(u, Lab{Enabled: c.lab})
			if c.rule == "" {
				if err != nil {
					t.Fatalf("CheckTarget(%s) = %v, want allowed", c.url, err)
				}
				return
			}
			var te *TargetError
			if !errors.As(err, &te) {
				t.Fatalf("CheckTarget(%s) = %v, want *TargetError %s", c.url, err, c.rule)
			}
			if te.Rule != c.rule || te.Detail != c.detail {
				t.Errorf("CheckTarget(%s) = %s %q, want %s %q", c.url, te.Rule, te.Detail, c.rule, c.detail)
			}
			if strings.Contains(te.Error(), ":pw@") {
				t.Errorf("error %q shows the password", te.Error())
			}
		})
	}
	t.Run("N7_nil_url", func(t *testing.T) {
		var te *TargetError
		if err := CheckTarget(nil, Lab{}); !errors.As(err, &te) || te.Detail != data.DetailNoAddress {
			t.Errorf("CheckTarget(nil) = %v, want %q", err, data.DetailNoAddress)
		}
	})
}

// TestRedact proves that transcripts never show a credential (rule N5).
func TestRedact(t *testing.T) {
	cases := []struct{ in, want string }{
		{"https://mcp.example.com/mcp?x=1", "https://mcp.example.com/mcp?x=1"},
		{"https://user:pw@mcp.example.com/mcp", "https://xxxxx@mcp.example.com/mcp"},
		{"https://ghp_token123@mcp.example.com/mcp", "https://xxxxx@mcp.example.com/mcp"},
		{"https://mcp.example.com/mcp?x=1&api_key=s3cret;token=t0k", "https://mcp.example.com/mcp?x=1&api_key=xxxxx&token=xxxxx"},
		{"https://mcp.example.com/messages?sessionId=abc", "https://mcp.example.com/messages?sessionId=abc"},
	}
	for _, c := range cases {
		t.Run("N5_"+c.in, func(t *testing.T) {
			u, err := url.Parse(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := redact(u); got != c.want {
				t.Errorf("redact(%s) = %s, want %s", c.in, got, c.want)
			}
		})
	}
}

// redirectChain serves /hop/N as a redirect to /hop/N+1 up to /hop/hops,
// which answers 200 "done"; every request is counted.
type redirectChain struct {
	hops   int
	status int
	seen   atomic.Int32
}

func (rc *redirectChain) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.seen.Add(1)
	n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hop/"))
	if n >= rc.hops {
		io.WriteString(w, "done")
		return
	}
	w.Header().Set("Location", fmt.Sprintf("/hop/%d", n+1))
	w.WriteHeader(rc.status)
}

// TestRedirects proves rule N8 against a real TLS server: up to 3 redirects
// are followed, a 4th fails, and each target passes N5-N7 again.
func TestRedirects(t *testing.T) {
	t.Parallel()
	t.Run("N8_three_redirects_followed", func(t *testing.T) {
		rc := &redirectChain{hops: 3, status: http.StatusTemporaryRedirect}
		srv := startLabServer(t, rc, labServerConfig{})
		g := newTestGuard(t, GuardConfig{Lab: srv.Lab})
		body, rec := postRPC(t, g, srv.URL+"/hop/0", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`)
		if body != "done" {
			t.Errorf("body = %q, want done", body)
		}
		if got := rc.seen.Load(); got != 4 {
			t.Errorf("server saw %d requests, want 4", got)
		}
		if len(rec.Exchanges) != 4 || rec.Exchanges[3].Hop != 3 || rec.Exchanges[3].Method != http.MethodPost {
			t.Errorf("exchanges = %+v, want 4 POSTs, the last at hop 3", rec.Exchanges)
		}
		for _, ex := range rec.Exchanges {
			if ex.ErrKind != ErrNone || ex.RPCMethod != "initialize" {
				t.Errorf("exchange %+v: want initialize without error", ex)
			}
		}
	})
	t.Run("N8_fourth_redirect_fails", func(t *testing.T) {
		rc := &redirectChain{hops: 4, status: http.StatusPermanentRedirect}
		srv := startLabServer(t, rc, labServerConfig{})
		g := newTestGuard(t, GuardConfig{Lab: srv.Lab})
		err := postErr(t, g, srv.URL+"/hop/0", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`)
		if err == nil {
			t.Fatal("4 redirects: no error")
		}
		if got := rc.seen.Load(); got != 4 {
			t.Errorf("server saw %d requests, want 4 (the 4th redirect not followed)", got)
		}
		last := lastExchange(t, g)
		if last.ErrKind != ErrTooManyRedirects || last.Hop != 4 || last.Blocked == "" {
			t.Errorf("last exchange = %+v, want a blocked hop 4 with ErrTooManyRedirects", last)
		}
	})

	refused := []struct {
		name     string
		location func(srv *labServer) string
		status   int
		kind     ErrKind
		detail   string
	}{
		{"N8_N7_redirect_to_http", func(s *labServer) string { return "http://" + s.Host + ":8443/x" },
			http.StatusTemporaryRedirect, ErrRedirectNotAllowed, "redirect to http://"},
		{"N8_N7_redirect_to_port_8080", func(s *labServer) string { return "https://" + s.Host + ":8080/x" },
			http.StatusTemporaryRedirect, ErrRedirectNotAllowed, "redirect to port 8080"},
		{"N8_N5_redirect_to_credentials", func(s *labServer) string { return "https://u:pw@" + s.Host + ":8443/x" },
			http.StatusTemporaryRedirect, ErrRedirectNotAllowed, "redirect to an address with a credential"},
		{"N8_N5_redirect_to_credential_param", func(s *labServer) string { return s.URL + "/x?api_key=abc" },
			http.StatusPermanentRedirect, ErrRedirectNotAllowed, "redirect to an address with a credential"},
		{"N8_N6_redirect_to_private_literal", func(s *labServer) string { return "https://10.1.2.3:8443/x" },
			http.StatusTemporaryRedirect, ErrRedirectNotAllowed, "redirect to a non-public address"},
		{"N8_S3_redirect_to_another_host", func(s *labServer) string { return "https://victim.test:8443/x" },
			http.StatusTemporaryRedirect, ErrRedirectNotAllowed, "redirect to another host"},
		{"N8_302_POST_to_GET_refused", func(s *labServer) string { return s.URL + "/x" },
			http.StatusFound, ErrRedirectMethodChange, "redirect turns POST into GET"},
		{"N8_301_POST_to_GET_refused", func(s *labServer) string { return s.URL + "/x" },
			http.StatusMovedPermanently, ErrRedirectMethodChange, "redirect turns POST into GET"},
		{"N8_303_POST_to_GET_refused", func(s *labServer) string { return s.URL + "/x" },
			http.StatusSeeOther, ErrRedirectMethodChange, "redirect turns POST into GET"},
	}
	// Each refused target at hop 1, 2 and 3: every hop's target passes
	// N5-N7 again, not only the first (a mutation checking only the first
	// hop would follow hops 2 and 3, or fail them with another kind).
	for _, c := range refused {
		for hop := 1; hop <= data.MaxRedirects; hop++ {
			name := c.name
			if hop > 1 {
				name += fmt.Sprintf("_at_hop_%d", hop)
			}
			t.Run(name, func(t *testing.T) {
				var seen atomic.Int32
				var srv *labServer
				srv = startLabServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					n := int(seen.Add(1))
					if want := hopPath(n - 1); r.URL.Path != want {
						t.Errorf("followed a refused redirect: %s %s, want %s", r.Method, r.URL, want)
					}
					if n < hop {
						w.Header().Set("Location", hopPath(n))
						w.WriteHeader(http.StatusTemporaryRedirect)
						return
					}
					w.Header().Set("Location", c.location(srv))
					w.WriteHeader(c.status)
				}), labServerConfig{})
				g := newTestGuard(t, GuardConfig{Lab: srv.Lab, DialContext: onlyDial(t, srv)})
				if err := postErr(t, g, srv.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`); err == nil {
					t.Fatal("refused redirect: no error")
				}
				if got := seen.Load(); got != int32(hop) {
					t.Errorf("server saw %d requests, want %d", got, hop)
				}
				last := lastExchange(t, g)
				if last.ErrKind != c.kind || last.Detail != c.detail || last.Hop != hop || last.Blocked == "" || last.RPCMethod != "initialize" {
					t.Errorf("last exchange = %+v, want blocked initialize at hop %d %v %q", last, hop, c.kind, c.detail)
				}
				if strings.Contains(last.URL, ":pw@") {
					t.Errorf("transcript URL %q shows the password", last.URL)
				}
				if got := g.Record().Requests; got != hop {
					t.Errorf("Requests = %d, want %d", got, hop)
				}
			})
		}
	}
}

// hopPath is the path of the request at redirect hop n: /mcp, /h1, /h2...
func hopPath(n int) string {
	if n == 0 {
		return "/mcp"
	}
	return fmt.Sprintf("/h%d", n)
}

// postRPC POSTs a JSON-RPC body through the guard's client and returns the
// answer body and the record; it fails the test on error.
func postRPC(t *testing.T, g *Guard, u, body string) (string, Record) {
	t.Helper()
	resp, err := post(t, g, u, body)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("read answer of %s: %v", u, err)
	}
	return string(b), g.Record()
}

// postErr POSTs and returns the error of the request or of reading its
// answer.
func postErr(t *testing.T, g *Guard, u, body string) error {
	t.Helper()
	resp, err := post(t, g, u, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

func post(t *testing.T, g *Guard, u, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatalf("new request %s: %v", u, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return g.Client().Do(req)
}

// lastExchange returns the last exchange the guard recorded.
func lastExchange(t *testing.T, g *Guard) Exchange {
	t.Helper()
	rec := g.Record()
	if len(rec.Exchanges) == 0 {
		t.Fatal("no exchange recorded")
	}
	return rec.Exchanges[len(rec.Exchanges)-1]
}

func ExampleCheckTarget() {
	for _, s := range []string{
		"https://mcp.example.com/mcp",
		"https://mcp.example.com/mcp?api_key=abc",
		"http://mcp.example.com/mcp",
		"https://mcp.example.com:8080/mcp",
		"https://127.0.0.1:8443/mcp",
	} {
		u, _ := url.Parse(s)
		var te *TargetError
		if err := CheckTarget(u, Lab{}); errors.As(err, &te) {
			fmt.Printf("%s: not_checkable (%s)\n", s, te.Detail)
			continue
		}
		fmt.Printf("%s: ok\n", s)
	}
	// Output:
	// https://mcp.example.com/mcp: ok
	// https://mcp.example.com/mcp?api_key=abc: not_checkable (address carries a credential)
	// http://mcp.example.com/mcp: not_checkable (not https)
	// https://mcp.example.com:8080/mcp: not_checkable (port not 443 or 8443)
	// https://127.0.0.1:8443/mcp: not_checkable (not a public IPv4 address)
}
