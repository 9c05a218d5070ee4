// Package hitl builds the events with which a step stops to ask someone
// else: a human, a bot channel, or another agent (delegation).
package hitl
