package data

// A Result's Detail says in a few words why it has its outcome; these are
// the details written by more than one package, or compared by a test or
// the site, so each is spelled once. (Reason, elsewhere, is only why a
// check was planned: ReasonNew, ReasonRetry, …)

// Details of a listed server that is not checkable whatever a check would
// do, as Server.NotCheckable gives them (table O).
const (
	DetailNoAddress         = "no address"
	DetailAddressUnparsable = "address does not parse"
	DetailAddressTooLong    = "address is too long"
)

// Details of an address a check refuses before anything is sent (rules
// N5-N7, a TargetError), or of an endpoint on another host (rule S3).
const (
	DetailCredential    = "address carries a credential"
	DetailNotHTTPS      = "not https"
	DetailPort          = "port not 443 or 8443"
	DetailNotPublicIPv4 = "not a public IPv4 address"
	DetailOtherHost     = "endpoint on another host"
)

// DetailCertExpired is the detail a check gives for a certificate that has
// expired (table O: failing, a TLS error); the site says an expired
// certificate in the same words.
const DetailCertExpired = "TLS: certificate has expired"
