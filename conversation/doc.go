// Package conversation is the conversation capability of an agent, the
// reference platform's: what a chat agent needs besides its answer.
//
//   - The history fitted into the model's input budget (Fit, FitStep):
//     tokens counted by the provider's own endpoint where it has one (a
//     TokenCounter: the Anthropic and Gemini providers are) and by a
//     conservative local Estimate otherwise; the oldest turns left out, or
//     summarised by the model (Summarise), never the system prompts nor
//     the last message. A turn those alone make too large ends the run
//     with a RefusalStopEvent input_too_large, streamed as an answer.
//   - The user's message condensed into a standalone question against the
//     history (Condense, CondenseStep; CondenseQuestion); an empty condensation ends the run
//     with a RefusalStopEvent condensation_empty.
//   - A title for the thread, once, after its first answered turn (Title, TitleThread,
//     a ConversationTitleEvent), and suggested follow-up questions after
//     each answer (SuggestFollowUps, a FollowUpQuestionsEvent), both from
//     Complete at the end of the answer step.
//   - Questions about the agent itself answered from its description
//     (Meta), behind a gate its other steps wait for.
//
// Each is off until its field of Conversation is set. The helpers work in
// any step; Steps gives them as steps of the agent's workflow, which the
// dispatcher runs, retries and traces like the agent's own. The
// capability's own model calls are LLM spans under the step's span.
//
//	conv := &conversation.Conversation{Provider: p, Model: "gpt-4o-mini",
//		Budget: 100_000, TitleThread: true, FollowUps: true}
//	answer := step.New(func(ctx step.Context, h *event.LimitChatHistoryEvent) (*event.LLMStopEvent, error) {
//		call, err := llm.StreamTo(ctx, p, conv.Request(h.LimitedHistory))
//		if err != nil {
//			return nil, err
//		}
//		return conversation.Complete(ctx, conv, h.LimitedHistory, call.Response.Message.Text(), call.StopEvent())
//	})
//	wf, err := step.NewWorkflow("ChatAgent", append(conv.Steps(), answer)...)
package conversation
