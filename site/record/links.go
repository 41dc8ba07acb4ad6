package record

// SiteURL is where the public site lives; the badges' Markdown and the
// feeds link to it.
const SiteURL = "https://plug.directory"

// PageURL is the public page of a server.
func PageURL(id string) string { return SiteURL + "/servers/" + id }
