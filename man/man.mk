## man/: the pages of the robotrain program and of its file formats. Other fragments add the
## pages of their own commands the same way.
RT_MAN_PODS += man/robotrain.pod
dist_man_MANS += man/robotrain.1
RT_MAN_PODS += man/robotrain-push.pod man/robotrain-wandb.pod
dist_man_MANS += man/robotrain-push.1 man/robotrain-wandb.1
