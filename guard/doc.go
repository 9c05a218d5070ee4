// Package guard checks a turn before and after the model: the user's input
// before any model sees it, the model's answer before it becomes the run's
// answer, and each tool call before the tool runs. A guard accepts or
// rejects, and every decision is published as the reference platform's
// guard events (GuardAcceptEvent, AgentSuitabilityRejectEvent,
// SensitiveInfoRejectEvent…), which package semantic traces as GUARDRAIL
// spans; a rejection that ends the run ends it with a RefusalStopEvent, as
// the reference does.
//
// # Guards
//
// A Guard has a name and a Check returning a Verdict; Func makes one of a
// function. The built-in guards are those of the reference:
//
//   - InputSize: the system prompt and the last message against the
//     model's input budget (tokens estimated, or counted by a tokenizer
//     you pass); too large ends the run (input_too_large) without a model
//     call.
//   - SensitiveInfo: e-mail addresses, phone numbers, IBANs (mod 97), card
//     numbers (Luhn) and Swiss AHV numbers (EAN-13 check digit). On an
//     answer it cleans the answer, which becomes the run's answer; on an
//     input it ends the run; on a tool call it keeps the tool from running.
//   - AgentSuitability: a model judges whether the agent, by its
//     description, is meant for the request; if not the run ends
//     (out_of_scope).
//   - ContextSufficiency: a model judges whether the context (documents a
//     step retrieved, or the system prompt and tool results) answers the
//     question.
//   - FewShot: a model judges the request against accepted and rejected
//     examples.
//
// ContextSufficiency and FewShot end the run on a rejection, or, with
// OnReject, let the turn go on with that instruction to the model (the
// reference answers such a rejection with a different prompt). The judged
// guards ask a Judge; ModelJudge asks any llm.Provider for a JSON verdict
// and parses it, StructuredJudge asks through the provider's structured
// output (llm.GenerateObject), and a judge that gives no verdict accepts, as the
// reference's guards do, so a flaky judge never blocks a user.
//
// # Where guards run
//
// A Set holds guards by stage. On the tool loop it is llm.Loop.Guards:
// input guards run before the turn's first model call, output guards on
// the final answer (whose chunks are published only once it passed, so a
// cleaned answer is never shown first) and tool-call guards before each
// tool. As an agent's own step, Set.Step takes the UserMessageEvent and
// publishes the decisions, and the agent's next step declares the
// acceptances it waits for:
//
//	set := &guard.Set{Input: []guard.Guard{
//		&guard.InputSize{Budget: 100_000},
//		&guard.AgentSuitability{Description: "Answers questions on Swiss taxes.", Judge: judge},
//	}}
//	answer := step.New(func(ctx step.Context, m *event.UserMessageEvent, _ *event.AgentSuitabilityAcceptEvent) (*event.LLMStopEvent, error) {
//		…
//	})
//	wf, err := step.NewWorkflow("TaxAgent", set.Step("guard"), answer)
//
// Run runs guards anywhere else, a step's own retrieval for instance. The
// guards of one stage run in parallel; each decision's event records when
// its guard started and ended, so their GUARDRAIL spans overlap as the
// checks did.
package guard
