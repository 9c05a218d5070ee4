package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
)

// arithmetic finds a sum in a question: numbers joined by operators.
var arithmetic = regexp.MustCompile(`[-(]*\d[\d.]*\)*(?:\s*[-+*/]\s*[-(]*\d[\d.]*\)*)+`)

// zones maps city names in a question to time zones.
var zones = map[string]string{"zurich": "Europe/Zurich", "zürich": "Europe/Zurich", "geneva": "Europe/Zurich",
	"tokyo": "Asia/Tokyo", "new york": "America/New_York", "london": "Europe/London"}

// Scripted is a deterministic model with the habits of a real one: it
// reads the question, thinks, asks for the tools it needs (several at
// once), then answers from their results, streaming word by word. It
// keeps no state: its answer depends on the conversation alone.
func Scripted() *llmtest.Provider {
	return llmtest.Func(func(req *llm.Request) *llmtest.Turn {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == llm.RoleTool {
			return answerFromResults(req.Messages)
		}
		q := last.Text()
		lower := strings.ToLower(q)
		t := llmtest.NewTurn().Model("scripted")
		var plan []string
		n := 0
		call := func(name string, args any) {
			n++
			raw, _ := json.Marshal(args)
			t.Tool(fmt.Sprintf("call_%d", n), name, string(raw))
		}
		expr := strings.TrimSpace(arithmetic.FindString(q))
		if expr != "" {
			plan = append(plan, "compute "+expr)
		}
		zone := ""
		if strings.Contains(lower, "time") || strings.Contains(lower, "date") {
			zone = "UTC"
			for city, z := range zones {
				if strings.Contains(lower, city) {
					zone = z
				}
			}
			plan = append(plan, "look at the clock in "+zone)
		}
		search := expr == "" && zone == "" || strings.Contains(lower, "say") || strings.Contains(lower, "search") || strings.Contains(lower, "docs") || strings.Contains(lower, "documentation")
		if search {
			plan = append(plan, "search the documentation")
		}
		t.Think("", "The user asks: "+q+" I should "+strings.Join(plan, ", then ")+".")
		t.Text("Let me use my tools.")
		if expr != "" {
			call("calculator", CalcArgs{Expression: expr})
		}
		if zone != "" {
			call("current_time", TimeArgs{Timezone: zone})
		}
		if search {
			call("search", SearchArgs{Query: q})
		}
		return t.Usage(40+len(q)/4, 30)
	})
}

// answerFromResults answers from the tool results at the end of msgs.
func answerFromResults(msgs []llm.Message) *llmtest.Turn {
	results := msgs[len(msgs)-1].Content
	uses := map[string]llm.Block{}
	for _, u := range msgs[len(msgs)-2].ToolUses() {
		uses[u.ToolUseID] = u
	}
	var parts []string
	for _, r := range results {
		u := uses[r.ToolUseID]
		if r.IsError {
			parts = append(parts, fmt.Sprintf("the %s tool failed (%s).", u.ToolName, strings.TrimPrefix(r.Text, "error: ")))
			continue
		}
		switch u.ToolName {
		case "calculator":
			var a CalcArgs
			_ = json.Unmarshal(u.Input, &a)
			parts = append(parts, fmt.Sprintf("%s = %s.", a.Expression, r.Text))
		case "current_time":
			var a TimeArgs
			_ = json.Unmarshal(u.Input, &a)
			parts = append(parts, fmt.Sprintf("in %s it is %s.", a.Timezone, r.Text))
		case "search":
			first, _, _ := strings.Cut(r.Text, "\n")
			parts = append(parts, "the documentation says: "+first)
		}
	}
	for i, p := range parts {
		parts[i] = strings.ToUpper(p[:1]) + p[1:]
	}
	answer := strings.Join(parts, " ")
	words := strings.SplitAfter(answer, " ")
	return llmtest.NewTurn().Model("scripted").Text(words...).Usage(120, len(words))
}
