package data

// Reasons a listed server is not checkable whatever a check would do,
// as Server.NotCheckable gives them (table O).
const (
	ReasonNoAddress         = "no address"
	ReasonAddressUnparsable = "address does not parse"
	ReasonAddressTooLong    = "address is too long"
)
