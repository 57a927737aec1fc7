package main

// ackEveryWrite makes index print a progress line, with the documents stored so far, after
// every write (the kill test reads what was acknowledged from them).
func ackEveryWrite() { progressEvery = 0 }
