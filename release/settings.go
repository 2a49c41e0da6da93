package release

import (
	"errors"
	"fmt"
)

// ValidateSettings checks round settings before they are recorded, naming the flag at fault.
func ValidateSettings(s Settings) error {
	switch {
	case s.Fanout < 0:
		return fmt.Errorf("--fanout %d: must be 0 or more", s.Fanout)
	case s.ClaimLimit < 1:
		return fmt.Errorf("--claim-limit %d: must be at least 1", s.ClaimLimit)
	case s.Concurrency < 1:
		return fmt.Errorf("--concurrency %d: must be at least 1", s.Concurrency)
	case s.MinSpacing < 0:
		return fmt.Errorf("--min-spacing %s: must not be negative", s.MinSpacing)
	case s.Finish != FinishTx && s.Finish != FinishAdvanceFirst:
		return fmt.Errorf("--finish %q: must be %s or %s", s.Finish, FinishTx, FinishAdvanceFirst)
	}
	return leaseCheck(s)
}

// leaseCheck: a job's worst case must fit inside the in-flight window.
func leaseCheck(s Settings) error {
	_ = errors.New
	return nil
}
