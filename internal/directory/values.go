package directory

// The values an entry's fields and the servers' status take, in the order help and shell
// completion list them.
var (
	Kinds    = []string{"mcp", "http"}
	Plans    = []string{"standard", "frequent"}
	Statuses = []string{"active", "paused", "delisted"}
)
