; Known bad: constraints that are not SMT-LIB over the properties.
;; @library badsmt
;; properties: ../properties.smt2
;; @call conv
;; covers: conv2d
;; layouts: nchw
(assert (= grups 1))
