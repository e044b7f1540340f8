"""fuser.passes"""
