package check

import (
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"plug.directory/prober/data"
)

// The tool lint (issue 19 point 4): what clients enforce of a tools/list
// answer, checked on the tools the check listed anyway. It runs in the
// check, not in publish from the stored definition sets: those leave out
// outputSchema (it is not fingerprinted) and sets over 1 MB, and the lint
// costs far less than the check's own decoding of the answer (see
// BenchmarkCheck), so each check publishes its own list.
//
// A schema is validated with santhosh-tekuri/jsonschema, which compiles it
// against its draft's meta-schema (embedded: 2020-12 unless $schema names
// another) and resolves its $refs, cycles included. google/jsonschema-go,
// which the SDK uses, only speaks 2020-12 and does not check a schema
// against the meta-schema. Its loader refuses every URL: a remote $ref or
// an unknown $schema is a problem, never a request.

// maxSchemaDepth bounds how deeply a schema may nest before it is reported
// instead of compiled: clients give up on such schemas too, and the
// compiler recurses.
const maxSchemaDepth = 64

// maxToolNameLen is the spec's bound on a tool name.
const maxToolNameLen = 128

// errRemoteRef is the refusing loader's answer to every URL.
var errRemoteRef = errors.New("not fetched: the check loads no schema from anywhere")

// refuseLoader is the schema compiler's loader: it loads nothing.
type refuseLoader struct{}

// Load refuses url.
func (refuseLoader) Load(string) (any, error) { return nil, errRemoteRef }

// lintTools returns the problems of tools, in their order, at most
// data.MaxToolProblems.
func lintTools(tools []listedTool) []data.ToolProblem {
	var out []data.ToolProblem
	add := func(tool, rule, msg string) {
		if len(out) < data.MaxToolProblems {
			out = append(out, data.ToolProblem{Tool: tool, Rule: rule, Message: msg})
		}
	}
	seen := make(map[string]int, len(tools))
	for _, t := range tools {
		if msg := badToolName(t.name); msg != "" {
			add(t.name, data.ToolRuleName, msg)
		}
		seen[t.name]++
		if seen[t.name] == 2 {
			add(t.name, data.ToolRuleDuplicate, "listed more than once: clients cannot tell which to call")
		}
		if strings.TrimSpace(t.description) == "" {
			add(t.name, data.ToolRuleNoDescription, "no description: a model cannot tell when to use it")
		}
		if t.input == nil {
			add(t.name, data.ToolRuleInputSchema, "no inputSchema")
		} else if msg := badSchema(t.input); msg != "" {
			add(t.name, data.ToolRuleInputSchema, msg)
		}
		if t.output != nil {
			if msg := badSchema(t.output); msg != "" {
				add(t.name, data.ToolRuleOutputSchema, msg)
			}
		}
		if len(out) == data.MaxToolProblems {
			break
		}
	}
	return out
}

// listedTool is what the lint reads of one listed tool; input and output
// are the schemas as decoded from JSON (nil when absent or null).
type listedTool struct {
	name, description string
	input, output     any
}

// badToolName says why name is not a tool name the spec allows, or "".
func badToolName(name string) string {
	if len(name) > maxToolNameLen {
		return fmt.Sprintf("name is %d bytes long; at most %d are allowed", len(name), maxToolNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' {
			continue
		}
		return fmt.Sprintf("name has %q at byte %d; only A-Z a-z 0-9 _ - . are allowed", string(rune(c)), i)
	}
	return ""
}

// badSchema says why schema is not a JSON Schema object of type "object"
// valid against its meta-schema, or "".
func badSchema(schema any) string {
	obj, ok := schema.(map[string]any)
	if !ok {
		return fmt.Sprintf("not a JSON object but %s", jsonKind(schema))
	}
	if obj["type"] != "object" {
		return `has no "type": "object"`
	}
	if depth(schema, 0) > maxSchemaDepth {
		return fmt.Sprintf("nested deeper than %d levels: not validated", maxSchemaDepth)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	const loc = "urn:plug.directory:tool-schema"
	if err := c.AddResource(loc, schema); err != nil {
		return "not a valid JSON Schema: " + oneLine(err)
	}
	if _, err := c.Compile(loc); err != nil {
		return "not a valid JSON Schema: " + oneLine(err)
	}
	return ""
}

// oneLine is an error's message on one line, at most 300 bytes.
func oneLine(err error) string {
	var ve *jsonschema.SchemaValidationError
	if errors.As(err, &ve) && ve.Err != nil {
		err = ve.Err
	}
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "a number"
}

// depth returns how deeply v nests, stopping once past maxSchemaDepth.
func depth(v any, d int) int {
	if d > maxSchemaDepth {
		return d
	}
	m := d
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			m = max(m, depth(e, d+1))
		}
	case []any:
		for _, e := range x {
			m = max(m, depth(e, d+1))
		}
	}
	return m
}
