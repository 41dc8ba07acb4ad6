package cli

import "flag"

// ContactVar registers -contact, the operator's e-mail address that the
// checks page and probe.json give (site.Config.Contact), with the one usage
// text of publish and run loop.
func ContactVar(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "contact", "", "the operator's e-mail `ADDRESS`, which the checks page and probe.json give owners who want the checks stopped (required; minute.sh takes it from PROBER_CONTACT in prober.conf)")
}
