; Known bad: a call covering an operator the registry does not know.
;; @library unknown
;; properties: ../properties.smt2
;; @call fancy
;; covers: convolution3d + relu
;; layouts: nchw
