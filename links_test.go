package agent_test

import (
	// The runner's tests start embedded servers and honour REDIS_URL, as a
	// program that imports these packages does.
	_ "github.com/saap-go/agent/embedded"
	_ "github.com/saap-go/agent/store/redis"
)
