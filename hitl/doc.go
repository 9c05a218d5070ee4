// Package hitl lets a step stop and ask: a human, another agent, or a bot
// channel (Slack, Teams, a webhook) for an answer.
//
// This file only names the package; the request helpers and timeouts live
// beside it. Bot and Webhook carry bot-in-the-loop questions to a channel.
package hitl
