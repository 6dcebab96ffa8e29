package sim

// Add adds o, another slice of the same cell (the same scenario and
// strategy, run later in a fresh market of its own), to r: the counts,
// the measured and drain times, the waits, Redis's CPU and commands, and
// the audit are summed; the client's RSS is the larger. The markets, the
// prefill's figures and the first error stay the first slice's where it
// has them. r's Wait must be set when o's is.
func (r *Result) Add(o Result) {
	r.Elapsed += o.Elapsed
	r.Drain += o.Drain
	r.Duration += o.Duration
	r.Interrupted = r.Interrupted || o.Interrupted
	r.Listed += o.Listed
	r.FailedLists += o.FailedLists
	r.ListRetries += o.ListRetries
	r.ListLockWaits += o.ListLockWaits
	r.Bought += o.Bought
	r.Failed.add(o.Failed)
	r.Retries += o.Retries
	r.LockWaits += o.LockWaits
	r.Execs += o.Execs
	r.Window += o.Window
	r.LockLost += o.LockLost
	r.EmptyPolls += o.EmptyPolls
	if o.Wait != nil {
		r.Wait.Merge(o.Wait)
	}
	if r.FirstError == "" {
		r.FirstError = o.FirstError
	}
	r.Audit.Violations.Add(o.Audit.Violations)
	r.Audit.LedgerChecked = r.Audit.LedgerChecked && o.Audit.LedgerChecked
	r.Audit.Users += o.Audit.Users
	r.Audit.Items += o.Audit.Items
	r.Audit.Listings += o.Audit.Listings
	for _, d := range o.Audit.Details {
		if len(r.Audit.Details) < 20 {
			r.Audit.Details = append(r.Audit.Details, d)
		}
	}
	// Redis's work while the workers ran: r's After moves on by o's
	// share, so that RedisCPU and RedisCommands give the sums.
	a, p := o.Server.After, o.Server.Prefilled
	if r.Server.After.OK && a.OK && p.OK {
		r.Server.After.CPU += a.CPU - p.CPU
		r.Server.After.Commands += a.Commands - p.Commands
	} else {
		r.Server.After.OK = false
	}
	r.ClientRSS = max(r.ClientRSS, o.ClientRSS)
	r.ClientCPU += o.ClientCPU
}
