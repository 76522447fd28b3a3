package dsl

import "testing"

func TestGoName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"workerId":                "WorkerID",
		"userID":                  "UserID",
		"assetVersionID":          "AssetVersionID",
		"candidateAssetVersionId": "CandidateAssetVersionID",
		"costUSD":                 "CostUSD",
		"HTMLAvailable":           "HTMLAvailable",
		"callbackUrl":             "CallbackURL",
		"apiKey":                  "APIKey",
		"GENERATING_SOLUTION":     "GeneratingSolution",
		"order_id":                "OrderID",
		"ID":                      "ID",
		"phash":                   "Phash",
		"security":                "Security",
		"_x":                      "X",
		"9lives":                  "X9lives",
	} {
		if got := goName(in); got != want {
			t.Errorf("goName(%q) = %q, want %q", in, got, want)
		}
	}
}
