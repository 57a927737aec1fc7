package parallel

// Ahead runs produce on a goroutine of its own and hands the items it emits to consume,
// in order, in chunks of size items with at most ahead chunks waiting, so that producing
// (reading and decoding lines) overlaps consuming (writing them). emit reports false once
// consume has failed: produce should then return. The first error of consume is returned,
// after produce has returned; otherwise the error of produce is, after every item it
// emitted has been consumed.
func Ahead[T any](size, ahead int, produce func(emit func(T) bool) error, consume func(*T) error) error {
	size, ahead = max(size, 1), max(ahead, 0)
	ch := make(chan []T, ahead)
	stop := make(chan struct{})
	var perr error
	go func() {
		defer close(ch)
		chunk := make([]T, 0, size)
		send := func() bool {
			select {
			case ch <- chunk:
				chunk = make([]T, 0, size)
				return true
			case <-stop:
				return false
			}
		}
		stopped := false
		perr = produce(func(v T) bool {
			if stopped {
				return false
			}
			chunk = append(chunk, v)
			if len(chunk) == size && !send() {
				stopped = true
			}
			return !stopped
		})
		if !stopped && len(chunk) > 0 {
			send() // the items before an error of produce count too
		}
	}()
	for chunk := range ch {
		for i := range chunk {
			if err := consume(&chunk[i]); err != nil {
				close(stop)
				for range ch { // until produce has returned
				}
				return err
			}
		}
	}
	return perr
}
