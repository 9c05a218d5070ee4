// Package memory is a state store kept in process memory: what tests, the
// agenttest harness and single-process programs use. Its state is lost when
// the process exits, and replicas in other processes do not share it; a
// deployment with more than one replica needs a shared store (package natskv,
// the default, or package redis).
package memory
