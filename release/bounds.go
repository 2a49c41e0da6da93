package release

import (
	"time"
)

// MaxVerifyWait bounds `deploy verify --wait`. The bounds of the round settings are the field
// table's (probe/settings: Fields).
const MaxVerifyWait = 24 * time.Hour
