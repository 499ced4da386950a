; Known bad: an in-place call whose constraints allow overwriting an
; operand that a later step still reads. Loading it must fail.
;; @library unsafe
;; properties: ../properties.smt2
;; @call relu_in_place
;; covers: relu
;; layouts: nchw
;; writes: operand
(assert (= dtype F32))
(assert (not overwritten_is_input))
;; @call op
;; covers: *
;; layouts: nchw
