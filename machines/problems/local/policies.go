package local

import (
	"context"
	"fmt"

	"github.com/fsmgen/fsmgen/machines/problems"
	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
)

// Policies is a problems.PolicyEngine with one policy per subscription tier.
// Private content never gets a video. Tiers maps a tier to its policy;
// NewPolicies fills it with the defaults.
type Policies struct {
	Tiers map[string]problems.ExecutionPolicy
}

var _ problems.PolicyEngine = (*Policies)(nil)

// NewPolicies returns the default tier table:
//
//	tier        threshold  video  retry_max  cost cap
//	free        0.85       skip   1          0.05 USD
//	pro         0.85       async  3          0.50 USD
//	enterprise  0.80       sync   3          2.00 USD
func NewPolicies() *Policies {
	return &Policies{Tiers: map[string]problems.ExecutionPolicy{
		problems.TierFree:       {RetrievalThreshold: 0.85, VideoGeneration: problems.VideoSkip, RetryMax: 1, CostCapUSD: 0.05},
		problems.TierPro:        {RetrievalThreshold: 0.85, VideoGeneration: problems.VideoAsync, RetryMax: 3, CostCapUSD: 0.50},
		problems.TierEnterprise: {RetrievalThreshold: 0.80, VideoGeneration: problems.VideoSync, RetryMax: 3, CostCapUSD: 2.00},
	}}
}

// Policy implements problems.PolicyEngine. An empty sensitivity is
// standard; an unknown workflow type, tier or sensitivity is an error.
func (p *Policies) Policy(_ context.Context, req problems.PolicyRequest) (problems.ExecutionPolicy, error) {
	if req.WorkflowType != rog.Type {
		return problems.ExecutionPolicy{}, fmt.Errorf("local: no policy for workflow type %q", req.WorkflowType)
	}
	pol, ok := p.Tiers[req.SubscriptionTier]
	if !ok {
		return problems.ExecutionPolicy{}, fmt.Errorf("local: no policy for subscription tier %q", req.SubscriptionTier)
	}
	sens := req.Sensitivity
	switch sens {
	case "":
		sens = problems.SensitivityStandard
	case problems.SensitivityPrivate:
		pol.VideoGeneration = problems.VideoSkip
	case problems.SensitivityStandard, problems.SensitivityPublic:
	default:
		return problems.ExecutionPolicy{}, fmt.Errorf("local: unknown content sensitivity %q", req.Sensitivity)
	}
	pol.SubscriptionTier = req.SubscriptionTier
	pol.Sensitivity = sens
	return pol, nil
}
