## man/: the pages of the robotrain program and of its file formats. Other fragments add the
## pages of their own commands the same way.
RT_MAN_PODS += man/robotrain.pod
dist_man_MANS += man/robotrain.1
