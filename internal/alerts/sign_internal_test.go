package alerts

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The specification's published vector (the reference libraries' test): the signer's headers
// for it are exactly these.
func TestTheSignatureMatchesTheStandardWebhooksVector(t *testing.T) {
	h, err := signHeaders("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	require.NoError(t, err)
	require.Equal(t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", h.Get("webhook-signature"))
	require.Equal(t, "1614265330", h.Get("webhook-timestamp"))
	require.Equal(t, "msg_p5jXN8AQM9LWM0D4loKWxJek", h.Get("webhook-id"))
}
