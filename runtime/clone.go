package runtime

import "slices"

// Clone returns a deep copy of d: changing the copy's slices, retry
// policies or timers leaves d as it was. A generated package's Definition
// returns such a copy.
func (d Definition) Clone() Definition {
	c := d
	c.States = slices.Clone(d.States)
	for i := range c.States {
		s := &c.States[i]
		if s.Retry != nil {
			s.Retry = s.Retry.Clone()
		}
		s.Timers = slices.Clone(s.Timers)
	}
	c.Events = slices.Clone(d.Events)
	for i := range c.Events {
		c.Events[i].Fields = slices.Clone(c.Events[i].Fields)
	}
	c.Guards = slices.Clone(d.Guards)
	c.Transitions = slices.Clone(d.Transitions)
	for i := range c.Transitions {
		t := &c.Transitions[i]
		t.Exit, t.Enter = slices.Clone(t.Exit), slices.Clone(t.Enter)
	}
	for i := range c.States {
		s := &c.States[i]
		s.Entry, s.Exit = slices.Clone(s.Entry), slices.Clone(s.Exit)
	}
	c.Composites = slices.Clone(d.Composites)
	for i := range c.Composites {
		cs := &c.Composites[i]
		cs.Timers, cs.History = slices.Clone(cs.Timers), slices.Clone(cs.History)
		cs.Entry, cs.Exit = slices.Clone(cs.Entry), slices.Clone(cs.Exit)
	}
	c.Actions = slices.Clone(d.Actions)
	if d.Upgrades != nil {
		c.Upgrades = make([]Upgrade, len(d.Upgrades))
		for i, m := range d.Upgrades {
			c.Upgrades[i] = m.Clone()
		}
	}
	return c
}

// Clone returns a copy of p that shares nothing with it. A generated
// definition holds a clone of the preset it names, so that changing one
// never changes the preset or another machine.
func (p RetryPolicy) Clone() *RetryPolicy {
	p.NonRetryable = slices.Clone(p.NonRetryable)
	return &p
}
