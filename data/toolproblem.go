package data

// ToolProblem is one thing in a server's tool definitions that clients
// reject or mishandle: advice, never a verdict.
type ToolProblem struct {
	Tool    string `json:"tool"`    // the tool's name as listed
	Rule    string `json:"rule"`    // one of the ToolRule* constants
	Message string `json:"message"` // what is wrong, for the owner
}

// The rules the tool lint applies.
const (
	ToolRuleInputSchema   = "input_schema"   // inputSchema missing, not an object of type "object", or not a valid JSON Schema
	ToolRuleOutputSchema  = "output_schema"  // outputSchema not an object of type "object", or not a valid JSON Schema
	ToolRuleName          = "name"           // name outside 1-128 of A-Z a-z 0-9 _ - .
	ToolRuleDuplicate     = "duplicate_name" // another tool of the list has the same name
	ToolRuleNoDescription = "no_description" // no description: models cannot tell when to use it
	ToolRuleBudget        = "lint_budget"    // the lint's budget left tools whose schemas it did not validate (Tool is "")
)

// MaxToolProblems bounds the problems kept of one check: a list of
// thousands of broken tools says all it has to say in the first ones.
const MaxToolProblems = 100
