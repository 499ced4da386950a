; Known bad: a call whose constraints no match can satisfy.
;; @library never
;; properties: ../properties.smt2
;; @call conv
;; covers: conv2d
;; layouts: nchw
(assert (and (> groups 2) (< groups 1)))
