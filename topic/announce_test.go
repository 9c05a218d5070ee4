package topic

import (
	"strings"
	"testing"
)

func TestDiscoveryAnnounce(t *testing.T) {
	s, err := DiscoveryAnnounce(KindAgent, "RAGAgent", "65f0c0ffee")
	if err != nil || s != "class_discovery.agent.RAGAgent.*.announce.65f0c0ffee" {
		t.Fatalf("DiscoveryAnnounce = %q, %v", s, err)
	}
	if !matchSubject(DiscoveryAnnouncements(KindAgent), s) {
		t.Errorf("%q does not match the announcement pattern %q", s, DiscoveryAnnouncements(KindAgent))
	}
	// The reference's runners and gateway never see an announcement.
	if matchSubject(DiscoveryRequests(KindAgent), s) {
		t.Errorf("an announcement matches the runners' request pattern")
	}
	if p, _ := DiscoveryResponses(KindAgent, "65f0c0ffee"); matchSubject(p, s) {
		t.Errorf("an announcement matches the gateway's response pattern")
	}
	d, err := ParseDiscovery(s)
	if err != nil || d != (Discovery{Kind: KindAgent, Class: "RAGAgent", Dir: DirAnnounce, CallID: "65f0c0ffee"}) {
		t.Errorf("ParseDiscovery = %+v, %v", d, err)
	}
	if _, err := DiscoveryAnnounce(KindAgent, AnyClass, "e1"); tokenErr(err) == nil {
		t.Error("DiscoveryAnnounce accepted class *")
	}
	if _, err := DiscoveryAnnounce(KindAgent, "RAGAgent", ""); tokenErr(err) == nil {
		t.Error("DiscoveryAnnounce accepted an empty event id")
	}
	if _, err := DiscoveryAnnounce("pipeline", "RAGAgent", "e1"); tokenErr(err) == nil {
		t.Error("DiscoveryAnnounce accepted kind pipeline")
	}
	if DiscoveryAnnouncements(KindProcess) != "class_discovery.process.*.*.announce.*" || DiscoveryAnnouncements("x") != "" {
		t.Error("DiscoveryAnnouncements")
	}
}

// matchSubject is NATS matching for patterns with "*" only.
func matchSubject(pattern, subject string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	if len(p) != len(s) {
		return false
	}
	for i := range p {
		if p[i] != "*" && p[i] != s[i] {
			return false
		}
	}
	return true
}
