; Known bad: a concat that places its operands in its result, whose
; constraints forget that each slice must be one block of the buffer (a
; batch above 1 interleaves them). Loading it must fail.
;; @library unsafe
;; properties: ../properties.smt2
;; @call concat_placed
;; covers: concat
;; layouts: nchw
;; writes: producers
(assert (= dtype F32))
(assert producers_own)
(assert (not placed_overwritten))
;; @call op
;; covers: *
;; layouts: nchw
