package data

import "time"

// The promises of the checks page, as the constants the code enforces. The
// publisher renders the page's facts (probe.json) from these same names (rule
// P2), so the page cannot drift from the code.
const (
	// UserAgentFormat is the exact User-Agent of every request (rule N1); %s is
	// the build's version (see Version).
	UserAgentFormat = "plug.directory-prober/%s (+https://plug.directory/probe)"
	// ProbeURL is the page the User-Agent points to.
	ProbeURL = "https://plug.directory/probe"
	// DefaultSourceAddr is the address checks leave from in production (rule
	// N11), as the checks page names it.
	DefaultSourceAddr = "87.236.197.37"

	// HourlyTierMaxRank is the lowest rank checked hourly (rule S1); every
	// other server is checked daily.
	HourlyTierMaxRank = 2000
	// HourlyCadence and DailyCadence are the usual paces of the two tiers.
	HourlyCadence = time.Hour
	DailyCadence  = 24 * time.Hour

	// HostMinSpacing is the least time between two check starts on one host
	// (rule S3).
	HostMinSpacing = time.Second
	// HostMaxPerHour is the most check starts on one host in any rolling 60
	// minutes (rule S3): once every 30 s on average.
	HostMaxPerHour = 120
	// HostMaxPerDay is the most check starts on one host in any rolling 24
	// hours (rule S3).
	HostMaxPerDay = 3000
	// NewServerSpacing spaces the first checks of servers a host gains at once
	// (rule S5).
	NewServerSpacing = 30 * time.Second
	// NewServerTarget is how soon a new server is first checked (rule S5).
	NewServerTarget = 5 * time.Minute
	// RetryAfterFailure is when a failing check is repeated (rule S6).
	RetryAfterFailure = 5 * time.Minute
	// RetryWindow is how long a failing streak is retried early (rule S6).
	RetryWindow = time.Hour
	// PauseWithin is how soon a pause request takes effect (rule S8).
	PauseWithin = 24 * time.Hour

	// MaxRedirects is the most redirects one request follows (rule N8).
	MaxRedirects = 3
	// MaxAnswerBytes is the most bytes read of one answer, counted after
	// decompression (rule N9).
	MaxAnswerBytes = 1 << 20
	// CheckTimeout bounds a whole check, all requests together (rule N10).
	CheckTimeout = 45 * time.Second

	// DiscoverProtocolVersion is the first protocol version asked
	// server/discover rather than initialize (rule N4); the checks page names it.
	DiscoverProtocolVersion = "2026-07-28"
)

// AllowedPorts are the only TCP ports a check connects to (rule N7).
var AllowedPorts = []uint16{443, 8443}

// AllowedMethods are the only HTTP methods a check sends (rule N2).
var AllowedMethods = []string{"GET", "POST"}

// AllowedRPCMethods are the only JSON-RPC messages a check sends (rule N3):
// three requests and one notification.
var AllowedRPCMethods = []string{"server/discover", "initialize", "notifications/initialized", "tools/list"}

// UserAgent returns the exact User-Agent of this build (rule N1).
func UserAgent() string { return fmtUserAgent(Version()) }
