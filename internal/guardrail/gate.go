package guardrail

// A Gate is a check running beside other work, such as a model request:
// what that work produces waits for it.
type Gate struct {
	done chan struct{}
	err  error
}

// NewGate starts check on a goroutine of its own.
func NewGate(check func() error) *Gate {
	g := &Gate{done: make(chan struct{})}
	go func() {
		defer close(g.done)
		g.err = check()
	}()
	return g
}

// Passed reports whether the check is done, and its error if it is.
func (g *Gate) Passed() (done bool, err error) {
	select {
	case <-g.done:
		return true, g.err
	default:
		return false, nil
	}
}

// Wait waits for the check and returns its error.
func (g *Gate) Wait() error {
	<-g.done
	return g.err
}

// An Output is a [Holder] whose text also waits for a gate, if any: a
// stream's text goes nowhere before the gate passed.
type Output struct {
	holder  *Holder // nil for none
	gate    *Gate   // nil once passed
	waiting []byte  // released by the holder, waiting for the gate
}

// NewOutput returns the output of holder (nil for none) behind gate (nil
// for none).
func NewOutput(holder *Holder, gate *Gate) *Output {
	return &Output{holder: holder, gate: gate}
}

// Write takes the next piece of text and returns what may be released.
func (o *Output) Write(text string) (string, error) {
	var err error
	if o.holder != nil {
		if text, err = o.holder.Write(text); err != nil {
			return "", err
		}
	}
	return o.pass(text, false)
}

// Close returns the rest of the text, once it all passed.
func (o *Output) Close() (string, error) {
	text := ""
	if o.holder != nil {
		var err error
		if text, err = o.holder.Close(); err != nil {
			return "", err
		}
	}
	return o.pass(text, true)
}

func (o *Output) pass(text string, final bool) (string, error) {
	if o.gate == nil {
		return text, nil
	}
	done, err := o.gate.Passed()
	if final && !done {
		done, err = true, o.gate.Wait()
	}
	if err != nil {
		return "", err
	}
	if !done {
		o.waiting = append(o.waiting, text...)
		return "", nil
	}
	o.gate = nil
	text = string(o.waiting) + text
	o.waiting = nil
	return text, nil
}
