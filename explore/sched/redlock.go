package sched

// Nodes is the number of independent servers the target's lock runs on;
// 0 for the one server.
func (t *Target) Nodes() int { return t.NodeCount }
